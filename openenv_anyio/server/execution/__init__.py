"""Where and how an environment's code runs: a bound environment and its runner (a worker
thread or inline), the faults environment code can raise, its action check and its tools.
Process isolation (:mod:`..isolation`) is the other implementation of a bound environment."""
