"""``speakstream serve``: the speech server (with the agent routes and the web page)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from speakstream.config import ServerConfig


def register(commands: Any) -> None:
    parser = commands.add_parser("serve", help="run the speech server")
    parser.add_argument("--host", help="address to bind (default 127.0.0.1; 0.0.0.0 in containers)")
    parser.add_argument("--port", type=int, help="port (default 8080)")
    parser.add_argument("--api-key", help="require this key on every route but /ping (visible in ps: prefer the next)")
    parser.add_argument("--api-key-file", type=Path, help="read the API key from this file")
    parser.add_argument(
        "--insecure", action="store_true", default=None, help="allow a non-loopback address without an API key"
    )
    parser.add_argument("--voice", help="default voice")
    parser.add_argument(
        "--languages", type=lambda v: tuple(t for t in v.split(",") if t), help="G2Ps to load at startup, e.g. es,zh"
    )
    parser.add_argument("--format", help="default audio format of the WebSocket session")
    parser.add_argument("--max-sessions", type=int)
    parser.add_argument("--queue-depth", type=int)
    parser.add_argument("--max-client-queue", type=int, help="queued chunks one client address may hold (0: no cap)")
    parser.add_argument(
        "--lanes",
        "--workers",
        dest="lanes",
        type=int,
        help="windows decoded at once (default 2 where the process may use 2+ CPUs, else 1; --workers: its old name)",
    )
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--graph", choices=("fast", "timed", "original"))
    parser.add_argument(
        "--decoder",
        choices=("auto", "mixed", "float"),
        help="the fast graph's decoder (default auto: mixed, partly int8, on a CPU; float on a GPU)",
    )
    parser.add_argument(
        "--crowded-decoder",
        choices=("auto", "int8", "same"),
        help="the decoder of openings while more replies wait than the lanes (default auto: int8 beside mixed)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        help="the most windows of different sessions decoded in one run (default 0: one; for a GPU)",
    )
    parser.add_argument("--fake-engine", action="store_true", default=None, help="tone generator instead of Kokoro")
    parser.add_argument("--no-first-chunk-priority", dest="first_chunk_priority", action="store_false", default=None)
    parser.add_argument(
        "--no-preempt", dest="preempt", action="store_false", default=None, help="first windows wait for a running one"
    )
    parser.add_argument("--llm-url", help="OpenAI-compatible LLM for the /agent routes")
    parser.add_argument("--llm-model", help="model name, or a GGUF path for an embedded llama.cpp")
    ray = parser.add_argument_group("Ray Serve (the `ray` extra): replicas behind Serve's proxy")
    ray.add_argument("--ray", action="store_true", help="run as a Ray Serve deployment")
    ray.add_argument("--ray-address", help="join this Ray cluster (default: RAY_ADDRESS, else start a local one)")
    ray.add_argument("--replicas", type=int, default=1, help="fixed number of replicas")
    ray.add_argument("--min-replicas", type=int, help="autoscaling: fewest replicas (default 1)")
    ray.add_argument("--max-replicas", type=int, help="autoscaling: most replicas (turns autoscaling on)")
    ray.add_argument("--target-sessions", type=float, default=2.0, help="autoscaling: ongoing sessions per replica")
    ray.add_argument("--replica-cpus", type=float, default=1.0, help="CPUs Ray reserves per replica")
    ray.add_argument("--replica-gpus", type=float, default=0.0, help="GPUs Ray reserves per replica")
    parser.set_defaults(handler=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    from speakstream.agent.routes import agent_routes, source_factory_from
    from speakstream.server.app import create_app
    from speakstream.server.serve import serve
    from speakstream.web import web_routes

    key = args.api_key
    if args.api_key_file is not None:
        key = args.api_key_file.read_text(encoding="utf-8").strip()
    config = ServerConfig.from_env(
        host=args.host,
        port=args.port,
        api_key=key,
        insecure=args.insecure,
        voice=args.voice,
        languages=args.languages,
        format=args.format,
        max_sessions=args.max_sessions,
        queue_depth=args.queue_depth,
        max_client_queue=args.max_client_queue,
        lanes=args.lanes,
        model_dir=args.model_dir,
        graph=args.graph,
        decoder=args.decoder,
        crowded_decoder=args.crowded_decoder,
        batch=args.batch,
        fake_engine=args.fake_engine,
        first_chunk_priority=args.first_chunk_priority,
        preempt=args.preempt,
    )
    problem = config.exposure_problem()
    if problem:
        print(f"speakstream serve: {problem}", file=sys.stderr)
        return 2
    llm_url, llm_model = args.llm_url, args.llm_model

    def extra_routes() -> list[Any]:
        return [*agent_routes(source_factory_from(llm_url=llm_url, llm_model=llm_model)), *web_routes()]

    if args.ray:
        return _serve_on_ray(args, config, extra_routes)
    serve(create_app(config, extra_routes=extra_routes()), config)
    return 0


def _serve_on_ray(args: argparse.Namespace, config: ServerConfig, extra: Any) -> int:
    try:
        from speakstream.server import ray_serve
    except ImportError:
        print("speakstream serve --ray: Ray is not installed (pip install 'speakstream[ray]')", file=sys.stderr)
        return 2
    scaling = ray_serve.Scaling(
        replicas=args.replicas,
        min_replicas=args.min_replicas,
        max_replicas=args.max_replicas,
        target_sessions=args.target_sessions,
        cpus_per_replica=args.replica_cpus,
        gpus_per_replica=args.replica_gpus,
    )
    ray_serve.run(config, scaling, address=args.ray_address, extra=extra)
    return 0
