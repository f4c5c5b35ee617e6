import NetdevctlCommands

NetdevctlProgram.main()
