// Types the README's and docs' examples use as the reader's own code. Everything else a block needs, it imports.
export {};
