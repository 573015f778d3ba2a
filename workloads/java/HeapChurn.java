// SPDX-License-Identifier: MIT
// A JVM whose heap is rewritten by its own threads, for the guest's
// real-server cases (tests/kernels/cases/99-server-jvm.sh compiles it with
// javac at test time): HOT_MB of long arrays, one per writer thread, each
// rewritten pass after pass with values that are a function of the array,
// the index and the pass (and short-lived objects allocated as it goes, so
// the collector runs too), and COLD_MB written once and left alone.
//
//   java HeapChurn HOT_MB COLD_MB THREADS CHECKFILE
//
// Prints "heapchurn ready" once every thread has finished a pass. When
// CHECKFILE exists, the writers stop where they are and every array is
// checked against what its passes must have left in it: prints each array's
// checksum and "heapchurn: checksums correct" (exit 0), or
// "heapchurn: WRONG ..." (exit 1).
import java.io.File;
import java.util.concurrent.CountDownLatch;

public class HeapChurn {
	static long value(int t, int i, long pass)
	{
		long x = ((long)t << 48) ^ ((long)i << 20) ^ pass;
		x *= 0x9E3779B97F4A7C15L;
		return x ^ (x >>> 29);
	}

	static final class Writer extends Thread {
		final int t;
		final long[] a;
		volatile long pass; // the pass in progress (1, 2, ...)
		volatile int pos; // elements of it written
		volatile boolean stop, stopped;
		final CountDownLatch first;
		Object[] garbage = new Object[64];

		Writer(int t, int n, CountDownLatch first)
		{
			this.t = t;
			this.a = new long[n];
			this.first = first;
			for (int i = 0; i < n; i++)
				a[i] = value(t, i, 0);
		}

		public void run()
		{
			for (long p = 1;; p++) {
				pass = p;
				for (int i = 0; i < a.length; i++) {
					a[i] = value(t, i, p);
					pos = i + 1;
					if ((i & 4095) == 0) {
						garbage[(i >> 12) & 63] = new byte[512 + (i & 511)];
						if (stop) {
							stopped = true;
							return;
						}
					}
				}
				if (p == 1)
					first.countDown();
			}
		}

		// every element as passes 1..pass-1 and pos elements of pass left it
		String check()
		{
			long sum = 0;
			for (int i = 0; i < a.length; i++) {
				long want = value(t, i, i < pos ? pass : pass - 1);
				if (a[i] != want)
					return "WRONG array " + t + " index " + i + " pass " + pass;
				sum += a[i];
			}
			return String.format("array %d: %d longs, pass %d, checksum %016x", t, a.length, pass, sum);
		}
	}

	public static void main(String[] args) throws Exception
	{
		int hot = Integer.parseInt(args[0]), cold = Integer.parseInt(args[1]);
		int threads = Integer.parseInt(args[2]);
		File check = new File(args[3]);
		long[] idle = new long[cold << 17];
		for (int i = 0; i < idle.length; i++)
			idle[i] = value(1000, i, 7);
		CountDownLatch first = new CountDownLatch(threads);
		Writer[] w = new Writer[threads];
		for (int t = 0; t < threads; t++) {
			w[t] = new Writer(t, (hot << 17) / threads, first);
			w[t].setDaemon(true);
			w[t].start();
		}
		first.await();
		System.out.println("heapchurn ready: " + hot + " MiB rewritten by " + threads +
				   " threads, " + cold + " MiB idle");
		System.out.flush();
		while (!check.exists())
			Thread.sleep(200);
		for (Writer x : w)
			x.stop = true;
		for (Writer x : w)
			x.join();
		boolean ok = true;
		for (Writer x : w) {
			String r = x.check();
			System.out.println("heapchurn: " + r);
			ok &= !r.startsWith("WRONG");
		}
		long sum = 0;
		for (int i = 0; i < idle.length; i++) {
			if (idle[i] != value(1000, i, 7)) {
				System.out.println("heapchurn: WRONG idle index " + i);
				ok = false;
				break;
			}
			sum += idle[i];
		}
		System.out.println(String.format("heapchurn: idle: %d longs, checksum %016x", idle.length, sum));
		System.out.println(ok ? "heapchurn: checksums correct" : "heapchurn: WRONG");
		System.out.flush();
		System.exit(ok ? 0 : 1);
	}
}
