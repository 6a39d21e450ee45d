"""The top layer: the recallfs command line and the FUSE daemon."""
