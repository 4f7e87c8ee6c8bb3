from agentloop.cli import main

raise SystemExit(main())
