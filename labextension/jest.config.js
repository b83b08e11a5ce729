/**
 * Jest runs the panel's pure logic (the runs' reducer and records, the chat state, the
 * proposal store, the stream's backoff, the memory model, ...) through ts-jest; the tests
 * in src/__tests__/ mirror the source folders.
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src'],
  testMatch: ['**/__tests__/**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }]
  }
};
