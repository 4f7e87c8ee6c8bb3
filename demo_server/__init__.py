"""The demo server: serves the built book and runs agentloop for its panels (app.create_app, `agentloop serve`)."""
