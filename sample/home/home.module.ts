import { Module } from '@nestjs/common';
import { HomeController } from './home.controller';

/** `GET /`: the sample's routes and how to try them. */
@Module({ controllers: [HomeController] })
export class HomeModule {}
