#!/usr/bin/env python3
"""A counting gRPC proxy for tests/bench/fleet_rpc_mix.sh (issue 27 item 1's check).

Listens in plaintext on --listen, forwards every call unchanged (bytes in, bytes out, with
its metadata) to benchd at --target, and counts per method: calls and failures; for
UploadSamples also each request's iteration samples and GPU samples (decoded with the v1
API's descriptor set). The same instrument for a real bench-agent and for fleet_sim, on the
wire. On SIGTERM or SIGINT it writes --out (JSON): {"methods": {name: {"calls", "errors"}},
"upload_batches": [[iterations, readings], ...], "reports": {kind: n}, "first_s", "last_s"} (the first and last
call's time, seconds since the proxy started), then exits.

Debian's python3-grpcio and python3-protobuf (/usr/bin/python3).
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--descriptor-set", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    files = descriptor_pb2.FileDescriptorSet()
    with open(args.descriptor_set, "rb") as f:
        files.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    factory = message_factory.MessageFactory(pool)
    upload = factory.GetPrototype(pool.FindMessageTypeByName("benchfleet.v1.UploadSamplesRequest"))
    report = factory.GetPrototype(pool.FindMessageTypeByName("benchfleet.v1.ReportStatusRequest"))
    state_names = pool.FindEnumTypeByName("benchfleet.v1.RankState").values_by_number
    streaming = {"/benchfleet.v1.AgentService/StreamAssignments",
                 "/benchfleet.v1.Controller/WatchJob"}

    lock = threading.Lock()
    start = time.monotonic()
    counts = {}
    batches = []
    reports = {}  # "STARTED x8", "STARTED+start", "SUCCEEDED", ... -> count
    span = [None, None]

    def record(method, ok):
        now = time.monotonic() - start
        with lock:
            entry = counts.setdefault(method, {"calls": 0, "errors": 0})
            entry["calls"] += 1
            entry["errors"] += 0 if ok else 1
            if span[0] is None:
                span[0] = now
            span[1] = now

    channel = grpc.insecure_channel(args.target, options=[
        ("grpc.max_receive_message_length", 64 << 20),
        ("grpc.max_send_message_length", 64 << 20)])
    identity = lambda b: b  # noqa: E731

    class Forward(grpc.GenericRpcHandler):
        def service(self, details):
            method = details.method
            name = method.rsplit("/", 1)[-1]
            metadata = [(k, v) for k, v in details.invocation_metadata
                        if not k.startswith(":") and k not in ("user-agent", "grpc-timeout")]
            if method in streaming:
                remote = channel.unary_stream(method, request_serializer=identity,
                                              response_deserializer=identity)

                def stream(request, context):
                    record(name, True)  # counted when opened; it lives until the agent goes
                    try:
                        for response in remote(request, metadata=metadata):
                            yield response
                    except grpc.RpcError as e:
                        if e.code() != grpc.StatusCode.CANCELLED:
                            context.abort(e.code(), e.details() or "")
                return grpc.unary_stream_rpc_method_handler(
                    stream, request_deserializer=identity, response_serializer=identity)
            remote = channel.unary_unary(method, request_serializer=identity,
                                         response_deserializer=identity)

            def unary(request, context):
                if name == "ReportStatus":
                    message = report()
                    message.ParseFromString(request)
                    kinds = sorted({state_names[r.state].name.replace("RANK_STATE_", "") +
                                    ("+start" if r.precision and r.state == 1 else "")
                                    for r in message.ranks})
                    key = ",".join(kinds) + f" x{len(message.ranks)}" * (len(message.ranks) > 1)
                    with lock:
                        reports[key] = reports.get(key, 0) + 1
                if name == "UploadSamples":
                    message = upload()
                    message.ParseFromString(request)
                    with lock:
                        batches.append([len(message.samples), len(message.gpu_samples)])
                try:
                    response = remote(request, metadata=metadata,
                                      timeout=context.time_remaining())
                except grpc.RpcError as e:
                    record(name, False)
                    context.abort(e.code(), e.details() or "")
                record(name, True)
                return response
            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=identity, response_serializer=identity)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=256),
                         options=[("grpc.max_receive_message_length", 64 << 20)])
    server.add_generic_rpc_handlers((Forward(),))
    if server.add_insecure_port(args.listen) == 0:
        sys.exit(f"rpc_count_proxy: cannot listen on {args.listen}")
    server.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    print(f"rpc_count_proxy: {args.listen} -> {args.target}", file=sys.stderr, flush=True)
    done.wait()
    with lock:
        out = {"methods": counts, "upload_batches": batches, "reports": reports,
               "first_s": span[0],
               "last_s": span[1]}
    with open(args.out, "w") as f:
        json.dump(out, f)
    server.stop(0)
    # Streams still forwarded hold the pool's threads: leave without joining them.
    os._exit(0)


if __name__ == "__main__":
    main()
