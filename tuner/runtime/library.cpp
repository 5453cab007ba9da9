// Placeholder: written on its branch.
