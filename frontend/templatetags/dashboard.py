"""Template tags for the dashboard's repeated markup.

``{% stat "Brokers up" "brokers" %}`` is one tile of a page's stat grid: a label and a value
that shows an en dash until the page's script fills ``[data-stat="brokers"]``. ``tone`` colours
the value (``ok``, ``warn``, ``err``, ``small-value``); ``bad_when_positive`` marks a tile
the script turns red when its number is above zero.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def stat(label: str, key: str, *, tone: str = "", bad_when_positive: bool = False) -> SafeString:
    """One stat tile: ``<div class="stat">`` with a label and a placeholder value."""
    return format_html(
        '<div class="stat"{}><div class="label">{}</div>'
        '<div class="value{}" data-stat="{}">\N{EN DASH}</div></div>',
        mark_safe(" data-bad-when-positive") if bad_when_positive else "",
        label,
        f" {tone}" if tone else "",
        key,
    )
