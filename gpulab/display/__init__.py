"""Rendering: build bundles (docs/bundle.md), tables and errors as HTML and text. It imports no other layer."""
