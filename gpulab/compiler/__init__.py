"""The compile pipeline: check -> frontend -> codegen -> nvrtc -> link -> disasm."""
