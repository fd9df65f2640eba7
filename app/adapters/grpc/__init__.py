"""PodResources v1 over gRPC: generated stubs, a server on a unix socket and a client."""
