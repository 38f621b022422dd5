"""The scripted-agent kit every domain's oracle and flawed agents are built on."""
