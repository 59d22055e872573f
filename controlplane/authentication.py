"""HTTP Basic authentication that does not pay for a password hash on every request.

REST Proxy clients send Basic credentials with every call, and Django's default hasher
(PBKDF2, about a million rounds) costs a large fraction of a CPU-second per check. After one
successful check we remember a keyed digest of ``username:password`` for a short time. A hit
still loads the user and is honoured only while the stored password hash is the one it was
verified against and the account is active, so a password change or deactivation takes
effect at once.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.authentication import BasicAuthentication

__all__ = ["CachedBasicAuthentication"]

_TTL_S = 60.0
_MAX_ENTRIES = 10_000


class CachedBasicAuthentication(BasicAuthentication):
    """DRF's BasicAuthentication with a short-lived cache of verified credentials."""

    _cache: dict[bytes, tuple[int, str, float]] = {}
    _lock = threading.Lock()

    @staticmethod
    def _digest(userid: str, password: str) -> bytes:
        key = settings.SECRET_KEY.encode()
        return hmac.new(key, f"{userid}\0{password}".encode(), hashlib.sha256).digest()

    def authenticate_credentials(
        self, userid: str, password: str, request: Any = None
    ) -> tuple[Any, None]:
        digest = self._digest(userid, password)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(digest)
        if hit is not None and hit[2] > now:
            user = get_user_model().objects.filter(pk=hit[0]).first()
            if user is not None and user.is_active and user.password == hit[1]:
                return user, None
        user, _ = super().authenticate_credentials(userid, password, request)
        with self._lock:
            if len(self._cache) >= _MAX_ENTRIES:
                self._cache.clear()
            self._cache[digest] = (user.pk, user.password, now + _TTL_S)
        return user, None
