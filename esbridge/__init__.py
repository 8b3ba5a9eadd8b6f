"""esbridge: first-class hybrid search for Elasticsearch and OpenSearch clusters."""

from esbridge.errors import EsbridgeError

__version__ = "0.1.0"
__all__ = ["EsbridgeError", "__version__"]
