"""Wire protocols.  Each module is pure: ``build_request`` plans the HTTP request,
``parse_stream`` turns SSE events into content items and a final StreamEnd."""
