// Builds the useChat page into web/dist (scripts/clients.sh --browser runs it).
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [react()],
  logLevel: 'warn',
  build: { outDir: 'dist', emptyOutDir: true },
});
