"""The Datasette metadata shipped with perfgate (datasette_metadata.json): titles and descriptions of every
table, view and column of the history, so `datasette history.db --metadata metadata.json` explains it."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

FILE = "datasette_metadata.json"


def datasette_metadata(database: str = "history") -> dict[str, Any]:
    """The metadata, keyed by Datasette's name for the database (the file name without .db)."""
    doc: dict[str, Any] = json.loads(resources.files("perfgate.store").joinpath(FILE).read_text(encoding="utf-8"))
    from perfgate.store.schema import SCHEMA_VERSION

    history = doc["databases"]["history"]
    # the version is the code's, never a number copied into the file (it said 4 when the schema was 6)
    history["description"] = history["description"].format(schema_version=SCHEMA_VERSION)
    doc["databases"] = {database: history}
    return doc
