"""One module per real dataset: download (pinned sha256) + prepare into the prepared format.

:mod:`.multi30k` (Task 1, Task 2, the Flickr8k subset), :mod:`.stair` (STAIR Captions +
COCO), :mod:`.ikea`; :mod:`._common` holds the shared preparation helpers. Checksums of the
upstream files are in ``checksums/`` (shipped as package data).
"""
