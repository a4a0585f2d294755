"""Renderers: each returns a string (or a Figure); the caller decides where it goes."""
