"""What every dashboard page shares: sign-in, the role a page needs, error pages, and the
template context (``nav``, ``title``) a page completes with :meth:`Page.page_context`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.generic import TemplateView

from controlplane.errors import ApiError
from controlplane.roles import VIEWER, has_role

__all__ = ["Page", "error_page"]


def error_page(request: HttpRequest, *, title: str, message: str, status: int) -> HttpResponse:
    return render(
        request, "frontend/error.html", {"title": title, "message": message}, status=status
    )


class Page(LoginRequiredMixin, TemplateView):
    """A signed-in page; ``can_operate`` / ``is_admin`` (context) gate mutating controls."""

    title = ""
    # The page's own static files under frontend/ (.css and .js), loaded after weir.css and
    # weir.js by frontend/base.html.
    assets: tuple[str, ...] = ()
    # The role needed to see the page at all.
    role = VIEWER

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user = request.user
        if user.is_authenticated and not has_role(user, self.role):
            message = f"This page needs the {self.role} role."
            return error_page(request, title="Not allowed", message=message, status=403)
        try:
            return super().dispatch(request, *args, **kwargs)
        except ApiError as exc:  # an unknown topic, an unreachable cluster...
            return error_page(
                request, title=self.title or "Error", message=exc.message, status=exc.status_code
            )

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(
            nav=self.nav(),
            title=self.title,
            stylesheets=[f"frontend/{a}" for a in self.assets if a.endswith(".css")],
            scripts=[f"frontend/{a}" for a in self.assets if a.endswith(".js")],
        )
        context.update(self.page_context(**kwargs))
        return context

    def nav(self) -> str:
        """The side-bar entry this page lights: the folder (or file) its template is in,
        ``frontend/groups/detail.html`` → ``groups``."""
        return self.template_name.removeprefix("frontend/").split("/")[0].removesuffix(".html")

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        """What this page adds to the template context (``title`` may override the class's);
        ``kwargs`` are the URL's."""
        return {}
