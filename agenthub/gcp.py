"""``agenthub.gcp`` is ``agenthub.hosts.gcp`` (Google credentials for Vertex AI through google-auth):
the name the README documents (``agenthub.gcp.service_account_file``) keeps working, and is the same
module object."""

import sys

from .hosts import gcp as _gcp

sys.modules[__name__] = _gcp
