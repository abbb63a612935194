"""A minimal OTLP/HTTP (protobuf) receiver on loopback, for end-to-end tests of the exporter path."""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

_ROUTES: dict[str, tuple[type[Any], type[Any], str]] = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse, "traces"),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse, "metrics"),
}


class OtlpReceiver(ThreadingHTTPServer):
    """Accepts POST /v1/traces and /v1/metrics, keeps each decoded export request; `stop()` ends it."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, args=(0.05,), name="otlp-receiver", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}"

    def start(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)

    def spans(self) -> list[Any]:
        """Every received span, as `(scope name, Span)` pairs."""
        with self.lock:
            return [
                (scope_spans.scope.name, span)
                for request in self.traces
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]

    def resource_attributes(self) -> dict[str, Any]:
        with self.lock:
            return {
                kv.key: any_value(kv.value)
                for request in self.traces
                for resource_spans in request.resource_spans
                for kv in resource_spans.resource.attributes
            }

    def metric_points(self, name: str) -> list[Any]:
        """Every data point of the histogram, sum or gauge called `name`, over all export requests."""
        points: list[Any] = []
        with self.lock:
            for request in self.metrics:
                for resource_metrics in request.resource_metrics:
                    for scope_metrics in resource_metrics.scope_metrics:
                        for metric in scope_metrics.metrics:
                            if metric.name == name:
                                kind = metric.WhichOneof("data")
                                points.extend(getattr(metric, kind).data_points)
        return points


def any_value(value: AnyValue) -> Any:
    """The Python value of an OTLP `AnyValue` (arrays as tuples)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(any_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def attributes_of(item: Any) -> dict[str, Any]:
    """A span's or data point's attributes as a plain dict."""
    return {kv.key: any_value(kv.value) for kv in item.attributes}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: OtlpReceiver

    def do_POST(self) -> None:
        route = _ROUTES.get(self.path.split("?", 1)[0])
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if route is None:
            self._reply(404, b"", "text/plain")
            return
        request_type, response_type, kind = route
        encoding = (self.headers.get("content-encoding") or "").lower()
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        request = request_type()
        try:
            request.ParseFromString(body)
        except Exception:
            self._reply(400, b"", "text/plain")
            return
        with self.server.lock:
            getattr(self.server, kind).append(request)
        self._reply(200, response_type().SerializeToString(), "application/x-protobuf")

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass
