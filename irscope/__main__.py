from irscope.entry import main

main()
