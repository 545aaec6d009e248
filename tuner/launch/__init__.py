"""The face of tuner.launch: what other packages use of it; the rest is private."""

from tuner.launch.base import EngineHandle, Launcher, LaunchRequest
from tuner.launch.classify import classify_log, port_taken
from tuner.launch.docker import ContainerHandle, DockerLauncher, container_spec, image_ref
from tuner.launch.gpus import GpuPool
from tuner.launch.isolation import cache_folder
from tuner.launch.liveness import unless_hung
from tuner.launch.process import ProcessHandle, ProcessLauncher, free_port
from tuner.launch.readiness import wait_ready
from tuner.launch.teardown import guarded

__all__ = [
    "ContainerHandle", "DockerLauncher", "EngineHandle", "GpuPool", "LaunchRequest",
    "Launcher", "ProcessHandle", "ProcessLauncher", "cache_folder", "classify_log",
    "container_spec", "free_port", "guarded", "image_ref", "port_taken", "unless_hung",
    "wait_ready",
]
