from longsynth.cli.main import main

main()
