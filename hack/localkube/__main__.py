"""``python -m localkube up|down|status|build|dev-up|dev-down``: the local control plane.

The Makefile's ``cluster-up``/``cluster-down`` and ``dev-up``/``dev-down`` call this;
``--state-dir`` lets two control planes (the developer's and the test session's) live side by side.
``dev-up --real-node`` starts the control plane with the real node in ``<state-dir>/real-node``
and installs the operator's images on it (``localkube.realnode``); ``dev-down`` stops both kinds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import ImageBuildError
from localkube.plane.controlplane import ControlPlane, ControlPlaneError, find_binaries
from localkube.plane.install_choices import InstallChoices
from localkube.plane.operator import LocalOperator, OperatorError
from localkube.plane.settings import ControlPlaneSettings
from localkube.realnode.cluster import REAL_NODE_SUBDIR, RealCluster
from localkube.realnode.settings import RealNodeError


def real_node_up(state_dir: Path, choices: InstallChoices) -> int:
    """The control plane and the real node in ``state_dir``, the operator installed on it with
    the components ``choices`` name."""
    started = time.monotonic()
    try:
        cluster = RealCluster.start(state_dir, log=lambda line: print(line, flush=True))
        rollout = cluster.install_operator(state_dir / "install", components=choices.components)
    except (ImageBuildError, RealNodeError, ControlPlaneError) as error:
        print(f"dev-up --real-node failed: {error}", file=sys.stderr)
        return 1
    plane = cluster.plane
    print(
        f"control plane and node Ready in {cluster.seconds_to_ready:.1f} s, operator rolled out"
        f" in {rollout:.1f} s ({time.monotonic() - started:.1f} s in all)\n"
        f"  export KUBECONFIG={plane.kubeconfig}\n"
        f"  export PATH={plane.kubectl_path.parent}:$PATH\n"
        f"  kubectl -n mxjob-system get pods -o wide\n"
        f"  logs: {plane.logs}/ (control plane), {cluster.node.paths.logs}/ (containerd,"
        " kubelet, ...)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localkube", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status", "build", "dev-up", "dev-down"])
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=PROJECT_ROOT / ".local",
        help="where certs, etcd data, logs and the kubeconfig live (default: .local)",
    )
    parser.add_argument(
        "--real-node",
        action="store_true",
        help="dev-up: the operator's images in containers on the real node (needs root)",
    )
    parser.add_argument(
        "--v1beta1",
        action="store_true",
        help="dev-up: serve MXJob v1beta1 too (manifests/components/v1beta1)",
    )
    parser.add_argument(
        "--validate-on-create",
        action="store_true",
        help="dev-up: the validating webhook judges CREATE too (components/validate-on-create)",
    )
    args = parser.parse_args(argv)
    choices = InstallChoices(v1beta1=args.v1beta1, validate_on_create=args.validate_on_create)
    if args.command == "dev-up" and args.real_node:
        return real_node_up(args.state_dir / REAL_NODE_SUBDIR, choices)
    if args.command == "build":
        print(find_binaries())
        return 0
    plane = ControlPlane(ControlPlaneSettings(state_dir=args.state_dir))
    if args.command == "dev-up":
        started = time.monotonic()
        try:
            operator_state = LocalOperator(plane, choices=choices).up()
        except (ControlPlaneError, OperatorError) as error:
            print(f"dev-up failed: {error}", file=sys.stderr)
            return 1
        print(
            f"control plane, webhook (https://127.0.0.1:{operator_state.webhook_port}) and "
            f"controller ready in {time.monotonic() - started:.1f} s\n"
            f"  export KUBECONFIG={plane.kubeconfig}\n"
            f"  export PATH={plane.kubectl_path.parent}:$PATH\n"
            f"  logs: {plane.logs}/ (webhook.log, controller.log, kube-apiserver.log, ...)"
        )
        return 0
    if args.command == "dev-down":
        LocalOperator(plane).down()
        plane.down()
        if (args.state_dir / REAL_NODE_SUBDIR).is_dir():
            RealCluster.stop(args.state_dir / REAL_NODE_SUBDIR)
        print("operator and control plane stopped")
        return 0
    if args.command == "up":
        started = time.monotonic()
        try:
            state = plane.up()
        except ControlPlaneError as error:
            print(f"cluster-up failed: {error}", file=sys.stderr)
            return 1
        print(
            f"control plane ready in {time.monotonic() - started:.1f} s at {state.server}\n"
            f"  export KUBECONFIG={plane.kubeconfig}\n"
            f"  kubectl: {plane.kubectl_path}\n"
            f"  logs:    {plane.logs}/"
        )
        return 0
    if args.command == "down":
        plane.down()
        print("control plane stopped")
        return 0
    running = plane.running()
    current = plane.state()
    print(f"running at {current.server}" if running and current else "not running")
    return 0 if running else 3


if __name__ == "__main__":
    sys.exit(main())
