"""What every room stands on: paths and pins, ports, processes, the one host-program runner,
the API client and the Go builds. Imports nothing else of localkube."""
