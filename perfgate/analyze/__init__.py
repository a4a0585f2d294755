"""`perfgate analyze`: summaries and diagnosis of any supported profiler file (pure functions)."""
