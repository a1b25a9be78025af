"""``agenthub.aws`` is ``agenthub.hosts.aws`` (SigV4, AWS credentials, Bedrock's host): the name the
README documents (``agenthub.aws.Credentials``) keeps working, and is the same module object."""

import sys

from .hosts import aws as _aws

sys.modules[__name__] = _aws
