"""Evaluate one encoder on image–text data: the library behind ``backretrieval evaluate``."""
