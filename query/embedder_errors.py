"""What the embedder raises: one place, for its loading, query and bulk parts and their callers."""


class ModelMissingError(RuntimeError):
    """The configured model directory, or sentence-transformers itself, is not there."""


class EmbedderError(RuntimeError):
    """The model failed to load or to encode."""
