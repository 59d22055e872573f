"""Weir's dashboard: Django templates, Plotly charts and websockets, every asset served by Weir.

Theory of operation. A page is a Django template rendered server-side from the same selectors
the API uses, so it is complete on first paint. Its script then opens one websocket and
redraws from what the server pushes: the monitor's ``/ws/cluster/`` and ``/ws/groups/<g>/``
messages, or a page-specific ``/ws/ui/...`` socket (``frontend.live``) whose consumer watches
Redis server-side and sends only when something changed. The browser never polls. Mutating
controls exist only for operators; they confirm, call the REST API (``/api/`` or
``/kafka/v3/``) with the session cookie and CSRF token, and report the result.

Pages live in ``frontend.pages.<area>`` (each exports ``urlpatterns``), live sockets in
``frontend.live.<area>`` (each exports ``websocket_urlpatterns``), templates under
``templates/frontend/<area>/`` and scripts under ``static/frontend/``.
"""
