// Configuration: `netdevd.conf` and its drop-ins, read into the session's `Configuration` with every problem a
// diagnostic naming file and line (`ConfigurationLoader`); `TextFile` reads small files with a size limit.
