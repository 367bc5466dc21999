"""MkDocs hooks of croupier's site (mkdocs.yml ``hooks``).

Pages other branches add (the threat model, the HTTP limits, ...) have their slot in the
nav before they exist: a slot whose file is not there yet is left out of the nav, so a
strict build neither fails nor links to a page that does not exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

OPTIONAL = frozenset({"threat-model.md", "configuration-limits.md"})


def _prune(items: list[Any], docs: Path) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                value = _prune(value, docs)
                if not value:
                    continue
            elif isinstance(value, str) and value in OPTIONAL and not (docs / value).exists():
                continue
            kept.append({title: value})
        elif isinstance(item, str) and item in OPTIONAL and not (docs / item).exists():
            continue
        else:
            kept.append(item)
    return kept


def on_config(config: Any) -> Any:
    config["nav"] = _prune(config["nav"], Path(config["docs_dir"]))
    return config
