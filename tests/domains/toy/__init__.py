"""A third domain only the tests know (a fitness studio): it proves the loop runs on a domain from outside."""
