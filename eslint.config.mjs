// Lint with type information (typescript-eslint's type-checked rules); formatting is Prettier's job.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test/consumers/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore marks a parameter kept for its position, and `{ omitted, ...rest }` drops a field on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Abortable waits reject with the caller's `signal.reason` (typed any) untouched, as fetch and timers/promises do,
      // and forward caught `unknown` errors as they came; a rejection with a known non-Error type is still reported.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // `async` on a method that implements a Promise-returning contract is deliberate even without an await:
      // it turns a synchronous throw into a rejection, which callers of the contract rely on.
      '@typescript-eslint/require-await': 'off',
      // Nest's own API types classes and handlers as `Function` (Reflector.get, ExecutionContext.getHandler,
      // design:returntype), and our explorers and contexts pass exactly those values through.
      '@typescript-eslint/no-unsafe-function-type': 'off',
    },
  },
  {
    // Test code reads untyped values on purpose: supertest's `res.body` and JSON.parse return any, and asserting on
    // their shape is the point of the test. Everything else (floating promises, unbound methods, ...) stays on.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  prettier,
);
