// SPDX-License-Identifier: MIT
/* The heat maps' shared parts: the colour scale, VMA ranking, sizes. */
#include <stdio.h>
#include <stdlib.h>

#include "report_int.h"

/* ColorBrewer YlOrRd, one step per 0.1: light = little written, dark = all */
static const char *const heat_colours[HEAT_LEVELS] = {
	"#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c",
	"#fc4e2a", "#e31a1c", "#bd0026", "#800026", "#4a0016",
};

int mlr_heat_level(double ratio)
{
	int l;

	if (!(ratio > 0))
		return 0;
	l = ratio >= 1 ? HEAT_LEVELS : 1 + (int)(ratio * HEAT_LEVELS);
	return l > HEAT_LEVELS ? HEAT_LEVELS : l;
}

const char *mlr_heat_level_colour(int l)
{
	if (l <= 0)
		return HEAT_ZERO;
	return heat_colours[(l > HEAT_LEVELS ? HEAT_LEVELS : l) - 1];
}

double mlr_heat_scale_legend(struct ml_rbuf *b, double x, double y, const char *what)
{
	char t[16];

	mlr_svg_text(b, x, y, "start", "legend", what);
	x += 7.0 * 30;
	for (int l = 0; l < HEAT_LEVELS; l++) {
		ml_rb_printf(
			b,
			"<rect class=\"swatch\" x=\"%.1f\" y=\"%.1f\" width=\"26\" height=\"12\" "
			"fill=\"%s\"/>\n",
			x + l * 26, y - 10, heat_colours[l]);
		if (l % 2 == 0) {
			snprintf(t, sizeof(t), "%g", (double)l / HEAT_LEVELS);
			mlr_svg_text(b, x + l * 26, y + 14, "middle", "tick", t);
		}
	}
	mlr_svg_text(b, x + HEAT_LEVELS * 26, y + 14, "middle", "tick", "1");
	x += HEAT_LEVELS * 26 + 20;
	return mlr_svg_legend(b, x, y, HEAT_ZERO, "tracked, not written");
}

static int cmp_rank(const void *a, const void *b, void *arg)
{
	const struct ml_rep_writes *w = arg;
	const struct ml_rep_vma *x = &w->vma[*(const uint32_t *)a];
	const struct ml_rep_vma *y = &w->vma[*(const uint32_t *)b];

	if (x->hot_ever != y->hot_ever)
		return x->hot_ever ? -1 : 1;
	if (x->dirty_pages != y->dirty_pages)
		return x->dirty_pages > y->dirty_pages ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

void mlr_rank_vmas(const struct ml_rep_writes *w, uint32_t *idx)
{
	for (size_t i = 0; i < w->nvma; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, w->nvma, sizeof(*idx), cmp_rank, (void *)w);
}
