"""Pure rules of the clarification lifecycle. Standard library only; anyone may import it."""
