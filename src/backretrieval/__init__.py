"""Backretrieval: image-pivoted evaluation of cross-lingual text representations.

Library first: every pipeline step is a pure function in a small module
(`metrics`, `sampling`, `encoders`, `image_features`, `stats`, ...) and the CLI
(`backretrieval.cli`) is a thin wrapper over them.
"""

__version__ = "0.1.0"
