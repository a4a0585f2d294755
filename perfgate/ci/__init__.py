"""GitHub: the REST calls behind the sticky comment, and the starter workflow `perfgate ci init` writes."""
