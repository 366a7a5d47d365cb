from irscope.cli import main

main()
