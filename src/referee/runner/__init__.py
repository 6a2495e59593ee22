"""The runner: starts the app, lets the actor perform each step, and captures evidence itself."""
