// `make lint` (and the test command, right after the type check): typescript-eslint's recommended
// rules on every source file, plus the type-aware rules that catch a promise nobody awaits or
// handles (a reconcile step whose rejection is dropped loses the fault it was handling, and an
// async callback handed to an API that ignores its result swallows its errors), an `await` on
// something that is not a promise, and a `return promise` inside try that skips its catch.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// The Node globals the plain .js/.mjs/.cjs files use (TypeScript files get theirs from @types/node).
const NODE_GLOBALS = Object.fromEntries(
  ['process', 'console', 'Buffer', 'URL', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'module', 'require', '__dirname']
    .map((g) => [g, 'readonly']),
);

export default defineConfig(
  { ignores: ['node_modules/', 'dist/', 'dist-bundle/', 'coverage/', '.cluster/', '**/*.validators.gen.ts'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: NODE_GLOBALS },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // tsc's convention (noUnusedLocals/Parameters): a leading underscore marks a name left unused on
      // purpose, e.g. `const { dataDigest: _never, ...obj } = cm` to drop a key from a copy.
      '@typescript-eslint/no-unused-vars': ['error', {
        argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_',
      }],
    },
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
    },
  },
);
