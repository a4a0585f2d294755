"""The static dashboard (`perfgate report --html DIR`): the history as a site that works from file:// and
GitHub Pages, with no server and nothing fetched from elsewhere.

history_data.py reads the store into records, verdicts.py is the one place where verdicts come from,
pages.py renders HTML (escaped) with the data embedded as JSON, write.py writes the files, and assets/
holds the page scripts, the style sheet and the vendored uPlot (MIT).
"""
