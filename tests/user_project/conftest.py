"""Eight simulated CPU devices, set before JAX starts its backend (as the shardviz_mesh skip message says)."""

import jax

jax.config.update("jax_num_cpu_devices", 8)
