
BlogitsJ(ыN╥>ку┐0╗Э┐Э4М┐r&╪?─A/┐╔Шl└ewL└╓Gx@З-2@