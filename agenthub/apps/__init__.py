"""The applications built on the library: ``agenthub serve`` (``server``, a WSGI app, with the
``playground`` page), the trace ``viewer``, ``agenthub chat`` (``chat``), ``agenthub demo``
(``demo``) and what they print on a terminal (``terminal``).  The pages' HTML, CSS and JavaScript
are files in ``assets/`` (package data); ``_dom`` reads the parts the two pages share.

Nothing in the pipeline imports this package; ``agenthub.__main__`` is the command line over it.
"""
