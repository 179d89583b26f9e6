from speakstream.cli import main

raise SystemExit(main())
