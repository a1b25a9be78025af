"""The pages' files (HTML, CSS, JavaScript): package data read by ``agenthub.apps._dom``."""
