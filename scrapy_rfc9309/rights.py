"""The AI opt-out tokens of the page directives: ``noai``, ``noimageai``
(DeviantArt, 2022) and ``noml`` (Mojeek's NoML, 2023), in ``<meta
name="robots">`` and ``X-Robots-Tag``, bot-scoped like the other directives.

No standard defines them; what this package decides is listed in
docs/rights.md: each token refuses the use of the page's content to train
AI / machine-learning models, ``noimageai`` only for image items.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from itemadapter import ItemAdapter

from .directives import DirectiveSet

__all__ = ["AI_TOKENS", "ai_refusal", "ai_tokens", "is_image_item", "is_training"]

#: The tokens read, in the order a refusal names them.
AI_TOKENS = ("noai", "noml", "noimageai")
#: The aipref category a training purpose names (``ROBOTS_PURPOSES``).
TRAINING = "train-ai"
#: Scrapy's ImagesPipeline fields (``IMAGES_URLS_FIELD``,
#: ``IMAGES_RESULT_FIELD``): an item carrying either is an image item.
IMAGE_FIELDS = ("image_urls", "images")


def ai_tokens(directives: DirectiveSet) -> tuple[str, ...]:
    """The AI opt-out tokens among ``directives`` (kept in ``other``)."""
    return tuple(token for token in AI_TOKENS if token in directives.other)


def is_training(purposes: Iterable[str]) -> bool:
    """Whether a crawl of these aipref purposes trains models: one of them
    names ``train-ai`` (alone or joined, as in ``search+train-ai``)."""
    return any(TRAINING in purpose.split("+") for purpose in purposes)


def is_image_item(item: Any, content_type: str, fields: Iterable[str]) -> bool:
    """Whether ``item`` is an image item: one of the response of an image
    (``content_type`` ``image/*``), or one giving images in one of
    ``fields`` (the ImagesPipeline's fields) a non-empty value."""
    if content_type.strip().lower().startswith("image/"):
        return True
    adapter = ItemAdapter(item)
    return any(adapter.get(field) for field in fields)


def ai_refusal(
    tokens: tuple[str, ...], item: Any, content_type: str, fields: Iterable[str]
) -> str | None:
    """The token refusing ``item`` for training, if one does: ``noai`` and
    ``noml`` refuse every item, ``noimageai`` image items."""
    for token in tokens:
        if token != "noimageai" or is_image_item(item, content_type, fields):
            return token
    return None
