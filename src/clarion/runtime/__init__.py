"""What every layer of the running process shares: the clock it sleeps through, the supervisor
that owns its background tasks, the named fault points, and the fields every log line carries.
Stands on the domain alone, so services, edges and the server may all import it.
"""
