"""Leaf helpers shared by every layer: atomic artifact writes (:mod:`.io`), hashes and model
fingerprints (:mod:`.hashing`), the device resolver (:mod:`.device`) and the content-addressed
embedding cache (:mod:`.cache`)."""
