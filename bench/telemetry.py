"""CPU per stream with agenthub.telemetry: off, instrumented with no SDK, and with the SDK and in-memory exporters.

    python bench/telemetry.py [--events 20000] [--runs 9] [--protocol openai-chat]

The SSE server is bench/server.py in another process (its CPU is not counted).  Each run consumes one
stream of ``--events`` text deltas with ``AutoLLMClient.streaming_response``; the modes alternate run by
run so drift hits them alike.  Modes:

- ``uninstrumented``: telemetry never instrumented in this run (the baseline);
- ``off``: ``instrument()`` then ``uninstrument()`` (what is left after it: nothing registered);
- ``no SDK``: ``instrument()`` with the OpenTelemetry API alone (no provider configured: the API's
  no-op tracer and meter);
- ``SDK``: ``instrument(TracerProvider + SimpleSpanProcessor(InMemorySpanExporter),
  MeterProvider(InMemoryMetricReader))``, content capture off.

Targets (issue 32): off and no SDK within noise of uninstrumented; SDK <= 1.1x.
"""

import argparse
import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from run import start_server  # noqa: E402  (the benchmark server, started as bench/run.py starts it)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--protocol", default="openai-chat")
    args = parser.parse_args(argv)

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agenthub import AutoLLMClient, telemetry

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])

    server, port = start_server()
    try:
        url = "http://127.0.0.1:{}/chunked/text-{}/{}".format(port, args.events, args.protocol)
        client = AutoLLMClient("bench-model", client_type=args.protocol, api_key="k", base_url=url)
        ask = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]

        def consume():
            n = 0
            for _ in client.streaming_response(ask):
                n += 1
            return n

        def setup(mode):
            telemetry.uninstrument()
            if mode == "off":
                telemetry.instrument()
                telemetry.uninstrument()
            elif mode == "no SDK":
                telemetry.instrument()
            elif mode == "SDK":
                telemetry.instrument(tracer_provider, meter_provider)

        modes = ["uninstrumented", "off", "no SDK", "SDK"]
        cpu = {mode: [] for mode in modes}
        consume()  # warm the connection pool and the imports
        for run in range(args.runs):
            for mode in (modes if run % 2 == 0 else modes[::-1]):
                setup(mode)
                gc.collect()
                start = time.process_time()
                events = consume()
                cpu[mode].append((time.process_time() - start) * 1000)
                assert events >= args.events, events
        telemetry.uninstrument()
        spans = len(exporter.get_finished_spans())
    finally:
        server.kill()
        server.wait()
    base_min = min(cpu["uninstrumented"])
    base_med = statistics.median(cpu["uninstrumented"])
    print("Python {}, {} text deltas per stream ({}), {} runs per mode, CPU ms of the consuming process".format(
        sys.version.split()[0], args.events, args.protocol, args.runs))
    print()
    print("| mode | CPU ms min | CPU ms median | ratio (min) | ratio (median) |")
    print("|---|---|---|---|---|")
    for mode in modes:
        low, mid = min(cpu[mode]), statistics.median(cpu[mode])
        print("| {} | {:.1f} | {:.1f} | {:.3f}x | {:.3f}x |".format(mode, low, mid, low / base_min, mid / base_med))
    print()
    print("spans exported in SDK mode: {} (one per stream)".format(spans))
    tracer_provider.shutdown()
    meter_provider.shutdown()


if __name__ == "__main__":
    main()
