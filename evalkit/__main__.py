from evalkit.cli import main

raise SystemExit(main())
